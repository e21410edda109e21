"""The kinds of work a task asks for (`category:` in a task file)."""

from __future__ import annotations

from enum import StrEnum


class Category(StrEnum):
    ITERATE_ON_FEATURE = "iterate_on_feature"
    DEBUGGING = "debugging"
    NEW_FEATURE = "new_feature"
    REFACTOR = "refactor"
    UNDERSTANDING = "understanding"
    DOCUMENTATION = "documentation"
    TESTING = "testing"
    CODE_REVIEW = "code_review"
    OPTIMIZE = "optimize"
    DEVOPS = "devops"
    MIGRATION = "migration"
