from cursorbench.answer import changed_code_lines, changed_lines

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


def test_changed_code_lines_leave_out_blank_and_comment_lines() -> None:
    assert changed_lines(PATCH) == 7
    assert changed_code_lines(PATCH) == 3  # def, return, old = 1
