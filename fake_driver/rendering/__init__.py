"""Pure rendering: a node's ResourceSlices (`slices`) from device records, the example and NVIDIA drivers'
devices (with Go's math/rand for the example's UUIDs), the DeviceClasses a personality installs, the
ledger of which physical GPU every device is."""
