"""Speaking ODBC safely, for every role that talks to a database: the workload's virtual users,
the SQL Server fault backend and the cluster views.

Connection settings, the connection-string grammar (every value escaped, the password only in
the string handed to the driver), SQL Server's connection attributes for ODBC Driver 18 and
FreeTDS, the meaning of a driver error (SQLSTATE and native number), and commit/rollback with
a deadline. pyodbc is imported only by the modules that open connections.
"""
