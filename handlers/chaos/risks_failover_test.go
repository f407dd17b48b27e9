package chaos

// riskFailoverUnreplicated is the way to a second charge that the Redis
// failover rows without WAIT measure (Result.Risk).
const riskFailoverUnreplicated = "Redis failover without REDIS_WAIT_REPLICAS: a record written to the master and not yet replicated is lost when the replica is promoted, and a copy then charges again"
