// 0002: the text read from an object's reference crop ('' when it shows none).
// Immutable once released: change the schema with a new numbered file.
ALTER TABLE Object ADD label STRING DEFAULT '';
