"""A Qt 5 window for the accessibility tests: labels, a line edit and a password line edit
(``QLineEdit.Password``) holding a secret. Run by Debian's python (python3-pyqt5) with
QT_LINUX_ACCESSIBILITY_ALWAYS_ON=1 (the session's environment); prints ``ready`` once shown."""

from __future__ import annotations

import importlib
import sys

from bench.a11y_apps.window import add_form, parser, place

# imported by name: mnemo's venv (and its type checker) has no PyQt5, Debian's python has
QtCore = importlib.import_module("PyQt5.QtCore")
QtWidgets = importlib.import_module("PyQt5.QtWidgets")


def main() -> int:
    p = parser(__doc__, "500x300+60+60")
    add_form(p, "line edit")
    args = p.parse_args()

    app = QtWidgets.QApplication([sys.argv[0]])
    win = QtWidgets.QWidget()
    win.setWindowTitle(args.title)
    win.setGeometry(*place(args.geometry))
    layout = QtWidgets.QVBoxLayout(win)
    for text in args.label:
        layout.addWidget(QtWidgets.QLabel(text))
    entry = QtWidgets.QLineEdit(args.entry)
    layout.addWidget(entry)
    secret = QtWidgets.QLineEdit()
    secret.setEchoMode(QtWidgets.QLineEdit.Password)
    secret.setText(args.password)
    layout.addWidget(secret)
    layout.addStretch(1)
    win.show()
    # once the event loop has shown the window (and its widgets' accessible objects exist)
    QtCore.QTimer.singleShot(200, lambda: print("ready", flush=True))
    return app.exec_()


if __name__ == "__main__":
    sys.exit(main())
