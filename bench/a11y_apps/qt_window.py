"""A Qt 5 window for the accessibility tests: labels, a line edit and a password line edit
(``QLineEdit.Password``) holding a secret. Run by Debian's python (python3-pyqt5) with
QT_LINUX_ACCESSIBILITY_ALWAYS_ON=1 (the session's environment); prints ``ready`` once shown."""

from __future__ import annotations

import argparse
import importlib
import sys

# imported by name: mnemo's venv (and its type checker) has no PyQt5, Debian's python has
QtCore = importlib.import_module("PyQt5.QtCore")
QtWidgets = importlib.import_module("PyQt5.QtWidgets")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--title", required=True)
    p.add_argument("--label", action="append", default=[], help="a label (repeat for more)")
    p.add_argument("--entry", default="", help="the text of an ordinary line edit")
    p.add_argument("--password", default="", help="the secret in a password line edit")
    p.add_argument("--geometry", default="500x300+60+60", help="WxH+X+Y")
    args = p.parse_args()

    app = QtWidgets.QApplication([sys.argv[0]])
    win = QtWidgets.QWidget()
    win.setWindowTitle(args.title)
    size, _, place = args.geometry.partition("+")
    w, h = (int(v) for v in size.split("x"))
    x, y = (int(v) for v in place.split("+"))
    win.setGeometry(x, y, w, h)
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
