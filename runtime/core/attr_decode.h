// A declarative decode of a kernel's attributes into a parameter struct: one table per struct
// (A8_ATTR(P, field) names the attribute as the field), the struct's member initializers the
// defaults, one generic decoder.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <type_traits>
#include <variant>

#include "runtime/core/kernel_args.h"

namespace a8 {

// One attribute of a parameter struct P: the kernel attribute `name` decoded into `field`. The
// field's value before the decode (P's member initializer) is the default for a plan without it.
template <typename P>
struct AttrField {
  const char* name;
  std::variant<float P::*, int64_t P::*, int32_t P::*, bool P::*> field;
};

// The field `name` of P decoded from the attribute of the same name.
#define A8_ATTR(P, name) \
  ::a8::AttrField<P> { #name, &P::name }

// Sets each field of *p from its attribute (integers for int and bool fields, nonzero is true),
// keeping the field's value where the kernel has no such attribute.
template <typename P>
void DecodeAttrs(const KernelArgs& a, std::initializer_list<AttrField<P>> fields, P* p) {
  for (const AttrField<P>& f : fields) {
    std::visit(
        [&](auto member) {
          auto& v = p->*member;
          using V = std::remove_reference_t<decltype(v)>;
          if constexpr (std::is_same_v<V, float>) {
            v = a.Float(f.name, v);
          } else if constexpr (std::is_same_v<V, bool>) {
            v = a.Int(f.name, v ? 1 : 0) != 0;
          } else {
            v = static_cast<V>(a.Int(f.name, v));
          }
        },
        f.field);
  }
}

}  // namespace a8
