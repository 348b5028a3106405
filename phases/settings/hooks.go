package settings

// Normalizer is implemented by a settings type whose decoded value needs
// more than the default tags give: defaults that depend on other fields,
// or aliases mapped onto the keys they stand for. Normalize runs after
// the default tags of the value and of everything below it; its error
// stops the decode (an *Error's path is relative to the value).
type Normalizer interface {
	Normalize() error
}

// Validator is implemented by a settings type with checks the min, max
// and enum tags cannot say (a key required, two keys that must agree).
// Validate runs after the tags' checks of the value and of everything
// below it; an *Error's path is relative to the value, and any other
// error is placed at the value's path.
type Validator interface {
	Validate() error
}

// Bounded is implemented by a numeric settings type that checks itself
// against its field's min and max tags (nil when the tag is absent; it is
// called with or without tags, unless the field is a nil pointer), to
// word the error in its own terms ("want a number of seconds from 0.001
// to 1e+07, got 1e-10"). Without it, numbers get the decoder's wording
// ("must be >= 0").
type Bounded interface {
	CheckBounds(min, max *float64) error
}
