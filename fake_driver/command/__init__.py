"""`python -m fake_driver` (`cli`) and the argument parsing it shares with the plugins (`cliargs`)."""
