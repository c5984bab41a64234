"""The legacy stack for real kubelets: a device plugin (kubelet API ``v1beta1``) advertising
``nvidia.com/gpu`` for the same physical GPUs the DRA side publishes, like NVIDIA's
k8s-device-plugin. Running it next to the kubelet plugin stages the double-stack failure
mode on a real node: the kubelet counts the GPUs as an extended resource while the DRA
scheduler sees them in ResourceSlices.
"""

from fake_driver.deviceplugin.server import DevicePluginServer

__all__ = ["DevicePluginServer"]
