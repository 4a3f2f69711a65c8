"""Small real applications for the accessibility tests and bench (``bench/a11y_session.py`` runs
them): a GTK 3 window, a Qt 5 window and a VTE terminal run by Debian's python (python3-gi,
python3-pyqt5), and a hostile AT-SPI peer run by mnemo's (jeepney). Each takes the texts it shows
from its arguments and prints "ready" once its window is shown."""
