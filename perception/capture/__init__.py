"""Desktop screenshot capture (X11): the daemon, its privacy rules, storage and control socket."""
