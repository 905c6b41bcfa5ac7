from virtbench.cli import main

main()
