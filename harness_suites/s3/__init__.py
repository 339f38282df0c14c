"""S3: partitions and the loss of a site."""

from reports.scenario_record import Scenario

# the Allure tree's top level shows the code and the name; the tables and the records key on the code
SCENARIO = Scenario("S3", "site failure")
