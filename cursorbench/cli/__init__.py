"""The `cursorbench` command line: the app (`app`), its command groups (`tasks`, `factory`,
`leaderboard`, `store`, `verify`) and what they share (`common`, `progress`).
"""
