from .cli import main

main(prog_name="orlgen")  # `python -m orlgen` says "orlgen" in usage lines, as the installed command does
