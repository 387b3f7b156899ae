package config

import (
	"fmt"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"
)

// checkIntegers reports a value written with a fraction for an integer
// key (block_size: 16.9): the YAML decoder truncates it silently, and a
// block size of 16 from 16.9 would hash every prompt differently from
// its engines.
func checkIntegers(n *yaml.Node, t reflect.Type) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if err := checkIntegers(c, t); err != nil {
				return err
			}
		}
	case yaml.MappingNode:
		if t.Kind() != reflect.Struct {
			return nil
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if f, ok := fieldByKey(t, n.Content[i].Value); ok {
				if err := checkIntegers(n.Content[i+1], f.Type); err != nil {
					return err
				}
			}
		}
	case yaml.SequenceNode:
		if t.Kind() != reflect.Slice && t.Kind() != reflect.Array {
			return nil
		}
		for _, c := range n.Content {
			if err := checkIntegers(c, t.Elem()); err != nil {
				return err
			}
		}
	case yaml.ScalarNode:
		switch t.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			if t.PkgPath() == "time" { // a time.Duration: "5m" or whole nanoseconds
				return nil
			}
			if n.Tag == "!!float" {
				return fmt.Errorf("line %d: %q is not a whole number", n.Line, n.Value)
			}
		}
	}
	return nil
}

// fieldByKey finds the struct field a YAML key decodes into.
func fieldByKey(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		if name == key {
			return f, true
		}
	}
	return reflect.StructField{}, false
}
