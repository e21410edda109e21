"""Harbor's task folders: export (`export`), import (`importer`), the verifiers that run in
Harbor's container (`verifier`, `harness`, `harness_verifier`) and canaries for Harbor tests
(`canary`).
"""
