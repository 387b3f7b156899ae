package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"

	"go.yaml.in/yaml/v3"
)

// Decode reads a YAML config over base: keys present replace base's
// values, absent keys keep them. Unknown keys, wrong types and a second
// document are errors naming the line.
func Decode(r io.Reader, base Config) (Config, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return base, fmt.Errorf("config: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err == nil {
		if err := checkIntegers(&doc, reflect.TypeFor[Config]()); err != nil {
			return base, fmt.Errorf("config: %w", err)
		}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	c := base
	if err := dec.Decode(&c); err != nil {
		if errors.Is(err, io.EOF) { // an empty file: the defaults
			return base, nil
		}
		return base, fmt.Errorf("config: %w", err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return base, errors.New("config: more than one YAML document")
	}
	return c, nil
}

// LoadFile decodes the file at path over base.
func LoadFile(path string, base Config) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return base, fmt.Errorf("config: %w", err)
	}
	c, err := Decode(bytes.NewReader(data), base)
	if err != nil {
		return base, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// YAML writes the config as the file would say it (--print-config).
func (c *Config) YAML() ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(c); err != nil {
		return nil, fmt.Errorf("config: encode: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("config: encode: %w", err)
	}
	return buf.Bytes(), nil
}
