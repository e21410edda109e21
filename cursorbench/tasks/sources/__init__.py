"""Task sources: where a task's code comes from (`source:` in a task file, its `kind` naming
one): what every source does (`base`), one module per source (`folder`, `package` with the
sdists it fetches in `sdist`, `harbor` with the Harbor task folders it reads in
`harbor_folder`), and the registry that dispatches on them (`registry`).
"""
