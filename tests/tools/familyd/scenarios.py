"""Every scenario of family D, in the order the README lists them."""

import scen_pending
import scen_comm
import scen_graph
import scen_rl
import scen_controls

ALL = [make() for mod in (scen_pending, scen_comm, scen_graph, scen_rl, scen_controls) for make in mod.ALL]
for spec in ALL:
    spec.control = spec.name in {make().name for make in scen_controls.ALL}
