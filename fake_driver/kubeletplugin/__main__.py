import sys

from fake_driver.kubeletplugin.main import main

sys.exit(main())
