"""S6: mixed workloads (OLTP beside an I/O or mail workload)."""

from reports.scenario_record import Scenario

# the Allure tree's top level shows the code and the name; the tables and the records key on the code
SCENARIO = Scenario("S6", "mixed workloads and N-1")
