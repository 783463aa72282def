from orlgen.entry import main

main()  # `python -m orlgen` is the installed `orlgen` command: the same guard, the same CLI
