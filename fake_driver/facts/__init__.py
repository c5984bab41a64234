"""GPU hardware facts (`profiles`) and driver-release facts per personality (`personalities`), the only
modules with them."""
