"""Through the API server: publishing the fleet's slices, installing DeviceClasses, the device plugin's
effect on a node (simulated), fault injection."""
