"""PluggableCritic from Python: ask the `critic` host (a running `critic serve`,
or the `critic` binary) to judge an agent's finish.

`pluggable_critic.openhands.PluggableCritic` plugs it into the OpenHands SDK.
"""

from pluggable_critic.host import CriticHost, HostError

__all__ = ["CriticHost", "HostError"]
