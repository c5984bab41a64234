import sys

from fake_driver.command.cli import main

sys.exit(main())
