import sys

from fake_driver.cli import main

sys.exit(main())
