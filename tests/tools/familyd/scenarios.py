"""Every scenario of family D, in the order the README lists them."""

import scen_pending
import scen_comm
import scen_graph

ALL = [make() for mod in (scen_pending, scen_comm, scen_graph) for make in mod.ALL]
