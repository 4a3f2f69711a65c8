"""Data sets, fixtures and media, runners, judges, metrics and reports behind ``mnemo bench``. Runs that
need the configured models wired together are started from ``mnemo`` (``mnemo.bench_cli``), which
hands them what they need: nothing here imports ``mnemo``."""
