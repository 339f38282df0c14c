"""S1: the inter-site latency sweep."""

from reports.scenario_record import Scenario

# the Allure tree's top level shows the code and the name; the tables and the records key on the code
SCENARIO = Scenario("S1", "inter-site latency sweep")
