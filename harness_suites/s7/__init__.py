"""S7: backup and restore under load."""

from reports.scenario_record import Scenario

# the Allure tree's top level shows the code and the name; the tables and the records key on the code
SCENARIO = Scenario("S7", "backup under load")
