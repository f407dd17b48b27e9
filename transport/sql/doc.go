// Package sql is the PostgreSQL transport on watermill-sql through pgx: a
// table per topic, a consumer group per handler, and delivery within a
// group serial and in order, one message at a time whatever the in-flight
// count (see [New]). Its subscribers consume in transactions that
// [Config.Beginner] opens: the service passes
// exactlyonce.ConsumerBeginner, so that transaction mode's units of work
// join them.
//
// [Config] names the pool and tunes the transport; its errors name the
// settings by what they are ("sql: missing PostgreSQL pool"), never by
// where they came from: the caller adds that.
package sql
