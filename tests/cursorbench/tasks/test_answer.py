from cursorbench.tasks.answer import changed_code_lines, changed_lines

PATCH = """\
diff --git a/pkg/m.py b/pkg/m.py
--- a/pkg/m.py
+++ b/pkg/m.py
@@ -1,2 +1,7 @@
 import os
+
+# a comment
+def f(x):
+    # why
+    return x  # trailing comments stay code
-    \t
-old = 1
"""


DOCS = """\
diff --git a/docs/api.rst b/docs/api.rst
--- a/docs/api.rst
+++ b/docs/api.rst
@@ -1 +1,3 @@
 API
+.. autofunction:: f
+   Restored with the function.
diff --git a/pkg/n.py b/pkg/n.py
--- a/pkg/n.py
+++ b/pkg/n.py
@@ -1 +1,2 @@
 import os
+import re
"""


def test_changed_code_lines_leave_out_blank_and_comment_lines() -> None:
    assert changed_lines(PATCH) == 7
    assert changed_code_lines(PATCH) == 3  # def, return, old = 1


def test_changed_code_lines_count_source_files_only() -> None:
    assert changed_lines(DOCS) == 3
    assert changed_code_lines(DOCS) == 1  # the docs page's lines are not code
    assert changed_code_lines("diff --git a/pkg/m.py b/pkg/m.py\n" + PATCH) == 3
