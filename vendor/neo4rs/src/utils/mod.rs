mod concurrent_hashmap;

pub use concurrent_hashmap::ConcurrentHashMap;
