"""Competing induction routes of deep models: the routes, their units and winners
(``route_units``) and which one wins from which initialization (``init_map``)."""
from mechjax.analysis.imir.routes.init_map import RouteProblem, route_problem
from mechjax.analysis.imir.routes.route_units import induction_routes, winners

__all__ = ["RouteProblem", "induction_routes", "route_problem", "winners"]
