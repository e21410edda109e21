"""Tasks: the file format (`task`), where they come from (`sources`), loading and suites
(`loader`, `suites`), building a workspace (`workspace`), the derived reference (`reference`,
`answer`) and suite statistics (`stats`).
"""
