"""PersistentVolumeClaims: a pod waits until every claim it mounts exists and is bound."""

from koordgang.plugins.volumebinding.plugin import VolumeBinding

__all__ = ["VolumeBinding"]
