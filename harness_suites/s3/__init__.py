"""S3: partitions and the loss of a site."""
