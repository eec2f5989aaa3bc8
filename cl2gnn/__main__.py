from .apps.cli import run

run()
