from arena_cli.cli import main

main()
