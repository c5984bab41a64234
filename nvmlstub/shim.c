// NVML functions whose nvml.h prototypes take or return const char*: a Go export cannot
// declare const, so these C definitions carry the exact prototypes and call into Go.
#include <stdlib.h>
#include "nvml.h"
#include "_cgo_export.h"

nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device) {
    return dhFindDevice("nvmlDeviceGetHandleByUUID", (char *)uuid, device);
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId, nvmlDevice_t *device) {
    return dhFindDevice("nvmlDeviceGetHandleByPciBusId_v2", (char *)pciBusId, device);
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char *pciBusId, nvmlDevice_t *device) {
    return dhFindDevice("nvmlDeviceGetHandleByPciBusId", (char *)pciBusId, device);
}

// Names of the nvmlReturn_t values this library returns; others read "Unknown Error".
const char *nvmlErrorString(nvmlReturn_t result) {
    switch (dhErrorString(result)) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_RESET_REQUIRED: return "GPU requires restart";
    case NVML_ERROR_IN_USE: return "In use by another client";
    case NVML_ERROR_INSUFFICIENT_RESOURCES: return "Insufficient Resources";
    default: return "Unknown Error";
    }
}

nvmlReturn_t nvmlDeviceCreateGpuInstanceWithPlacement(nvmlDevice_t device, unsigned int profileId,
                                                      const nvmlGpuInstancePlacement_t *placement,
                                                      nvmlGpuInstance_t *gpuInstance) {
    return dhCreateGpuInstanceWithPlacement(device, profileId, (nvmlGpuInstancePlacement_t *)placement,
                                            gpuInstance);
}
