"""S4: application failover, planned and unplanned."""

from reports.scenario_record import Scenario

# the Allure tree's top level shows the code and the name; the tables and the records key on the code
SCENARIO = Scenario("S4", "application failover")
