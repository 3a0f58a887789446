//! The shape of a `Deserialize` type as its derive asks for it: every struct
//! with its field names (as serialized: kebab-case here), every field's kind.
//!
//! A deserializer that answers each request with a placeholder value and
//! writes down what was asked: `deserialize_struct` hands over the field
//! names, and each field is then deserialized in turn, so nested structs,
//! options and sequences are followed. This reads the parser's own
//! definition of the configuration instead of a copy of it, and needs
//! nothing from the configuration types but `Deserialize`.

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// What a value is.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Shape {
    /// Not asked for yet (or asked in a way this probe does not follow).
    Unknown,
    /// `bool`.
    Bool,
    /// Any integer type.
    Integer,
    /// `f32` or `f64`.
    Float,
    /// A string (`String`, `PathBuf`).
    String,
    /// Whatever comes (`deserialize_any`: `toml::Value`).
    Any,
    /// `Option<T>`.
    Option(Box<Shape>),
    /// A sequence of elements of this shape.
    Seq(Box<Shape>),
    /// A struct, its fields in declaration order.
    Struct(Vec<(&'static str, Shape)>),
}

/// The shape of `T`.
///
/// # Panics
/// When `T`'s `Deserialize` asks for something the probe cannot answer.
pub(crate) fn shape_of<T: de::DeserializeOwned>() -> Shape {
    let mut shape = Shape::Unknown;
    if let Err(e) = T::deserialize(Probe { slot: &mut shape }) {
        panic!(
            "probing {}: {e} (got this far: {shape:?})",
            std::any::type_name::<T>()
        );
    }
    shape
}

/// The probe's error: only when a visitor refuses the placeholder.
#[derive(Debug)]
pub(crate) struct ProbeError(String);

impl std::fmt::Display for ProbeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ProbeError {}

impl de::Error for ProbeError {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        Self(msg.to_string())
    }
}

struct Probe<'a> {
    slot: &'a mut Shape,
}

impl<'de> Deserializer<'de> for Probe<'_> {
    type Error = ProbeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
        *self.slot = Shape::Any;
        visitor.visit_bool(false)
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
        *self.slot = Shape::Bool;
        visitor.visit_bool(false)
    }

    fn deserialize_i8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
        self.integer(visitor)
    }

    fn deserialize_i16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
        self.integer(visitor)
    }

    fn deserialize_i32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
        self.integer(visitor)
    }

    fn deserialize_i64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
        self.integer(visitor)
    }

    fn deserialize_u8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
        self.integer(visitor)
    }

    fn deserialize_u16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
        self.integer(visitor)
    }

    fn deserialize_u32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
        self.integer(visitor)
    }

    fn deserialize_u64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
        self.integer(visitor)
    }

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
        *self.slot = Shape::Float;
        visitor.visit_f64(0.0)
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
        *self.slot = Shape::Float;
        visitor.visit_f64(0.0)
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
        *self.slot = Shape::String;
        visitor.visit_str("")
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
        *self.slot = Shape::String;
        visitor.visit_str("")
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
        *self.slot = Shape::Option(Box::new(Shape::Unknown));
        let Shape::Option(inner) = self.slot else {
            unreachable!("just set");
        };
        visitor.visit_some(Probe { slot: inner })
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
        *self.slot = Shape::Seq(Box::new(Shape::Unknown));
        let Shape::Seq(element) = self.slot else {
            unreachable!("just set");
        };
        visitor.visit_seq(OneElement {
            slot: Some(element),
        })
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, ProbeError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, ProbeError> {
        *self.slot = Shape::Struct(fields.iter().map(|f| (*f, Shape::Unknown)).collect());
        let Shape::Struct(fields) = self.slot else {
            unreachable!("just set");
        };
        visitor.visit_map(EveryField { fields, next: 0 })
    }

    serde::forward_to_deserialize_any! {
        i128 u128 char bytes byte_buf unit unit_struct tuple tuple_struct map enum
        identifier ignored_any
    }
}

impl Probe<'_> {
    fn integer<'de, V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
        *self.slot = Shape::Integer;
        visitor.visit_u8(1)
    }
}

/// A sequence of one element, so that the element's shape is asked for.
struct OneElement<'a> {
    slot: Option<&'a mut Shape>,
}

impl<'de> SeqAccess<'de> for OneElement<'_> {
    type Error = ProbeError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, ProbeError> {
        match self.slot.take() {
            Some(slot) => seed.deserialize(Probe { slot }).map(Some),
            None => Ok(None),
        }
    }
}

/// A map with every field of a struct once, in order.
struct EveryField<'a> {
    fields: &'a mut Vec<(&'static str, Shape)>,
    next: usize,
}

impl<'de> MapAccess<'de> for EveryField<'_> {
    type Error = ProbeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, ProbeError> {
        let Some((name, _)) = self.fields.get(self.next) else {
            return Ok(None);
        };
        seed.deserialize(de::value::StrDeserializer::<ProbeError>::new(name))
            .map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, ProbeError> {
        let (_, slot) = &mut self.fields[self.next];
        self.next += 1;
        seed.deserialize(Probe { slot })
    }
}
