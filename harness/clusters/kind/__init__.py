"""The kind provider (provider): configs per cell (config), the host-side kwok controller
(kwok), pod networking (net), the Docker engine it starts where none answers (engine,
engine_runc), and the offline node and driver images (images/)."""
