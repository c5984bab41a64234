import sys

from fake_driver.deviceplugin.main import main

sys.exit(main())
