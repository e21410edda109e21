"""Tasks: the file format (`task`, `category`), where they come from (`sources`: one module
per task source and their registry), loading and suites (`loader`, `suites`), building a
workspace (`workspace`), the derived reference (`reference`, `answer`) and suite statistics
(`stats`).
"""
