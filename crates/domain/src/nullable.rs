//! PATCH fields that may be cleared: absent → `None`, `null` → `Some(None)`, value →
//! `Some(Some(v))`. Serde alone reads `null` as absent for `Option<Option<T>>`.

use serde::{Deserialize, Deserializer};

pub fn deserialize<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

#[cfg(test)]
mod tests {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct P {
        #[serde(default, deserialize_with = "super::deserialize")]
        x: Option<Option<i32>>,
    }

    #[test]
    fn absent_null_and_value_differ() {
        assert_eq!(serde_json::from_str::<P>("{}").unwrap().x, None);
        assert_eq!(
            serde_json::from_str::<P>(r#"{"x": null}"#).unwrap().x,
            Some(None)
        );
        assert_eq!(
            serde_json::from_str::<P>(r#"{"x": 3}"#).unwrap().x,
            Some(Some(3))
        );
    }
}
