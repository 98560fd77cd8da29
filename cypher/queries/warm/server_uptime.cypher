// How long the graph server's JVM has run, in milliseconds (crates/graph/src/warm.rs): a server
// that has run for long has compiled the engine's path, and needs no warm-up passes.
CALL dbms.queryJmx('java.lang:type=Runtime') YIELD attributes
RETURN attributes.Uptime.value AS ms
