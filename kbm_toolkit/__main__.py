from kbm_toolkit.cli import main

main()
