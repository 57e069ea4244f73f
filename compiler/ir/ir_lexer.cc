#include "compiler/ir/ir_lexer.h"

namespace a8 {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsIdentChar(char c) { return IsAlpha(c) || IsDigit(c) || c == '_' || c == '.'; }
bool IsNameChar(char c) {
  return IsAlpha(c) || IsDigit(c) || c == '_' || c == '.' || c == ':' || c == '/' || c == '-';
}
int HexDigit(char c) {
  if (IsDigit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class Lexer {
 public:
  Lexer(std::string_view text, const std::string& source) : text_(text), source_(source) {}

  StatusOr<std::vector<Token>> Run() {
    std::vector<Token> tokens;
    while (true) {
      SkipSpaceAndComments();
      Token t;
      t.line = line_;
      t.col = col_;
      if (pos_ >= text_.size()) {
        tokens.push_back(std::move(t));
        return tokens;
      }
      A8_RETURN_IF_ERROR(LexOne(&t));
      tokens.push_back(std::move(t));
    }
  }

 private:
  char Peek(size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }
  void Advance() {
    if (text_[pos_] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    ++pos_;
  }
  Status Error(int line, int col, const std::string& message) const {
    return InvalidInput("{}:{}:{}: {}", source_, line, col, message);
  }

  void SkipSpaceAndComments() {
    while (pos_ < text_.size()) {
      char c = Peek();
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        Advance();
      } else if (c == '#' || (c == '/' && Peek(1) == '/')) {
        while (pos_ < text_.size() && Peek() != '\n') Advance();
      } else {
        return;
      }
    }
  }

  Status LexOne(Token* t) {
    char c = Peek();
    if (c == '%' || c == '@') {
      t->kind = c == '%' ? TokKind::kValueName : TokKind::kGraphName;
      Advance();
      if (Peek() == '"') return LexString(t);
      if (!IsNameChar(Peek())) {
        return Error(t->line, t->col,
                     fmt::format("expected a name after '{}' (bare, or a quoted string)", c));
      }
      while (IsNameChar(Peek())) {
        t->text += Peek();
        Advance();
      }
      return Status::Ok();
    }
    if (c == '"') {
      t->kind = TokKind::kString;
      return LexString(t);
    }
    if (IsDigit(c) || (c == '-' && IsDigit(Peek(1)))) return LexNumber(t);
    if (IsAlpha(c) || c == '_') {
      t->kind = TokKind::kIdent;
      while (IsIdentChar(Peek())) {
        t->text += Peek();
        Advance();
      }
      return Status::Ok();
    }
    if (std::string_view("(){}[]<>,=:-?").find(c) != std::string_view::npos) {
      t->kind = TokKind::kPunct;
      t->text = std::string(1, c);
      Advance();
      return Status::Ok();
    }
    unsigned char u = static_cast<unsigned char>(c);
    return Error(t->line, t->col,
                 u >= 0x20 && u < 0x7f ? fmt::format("unexpected character '{}'", c)
                                       : fmt::format("unexpected byte 0x{:02x}", u));
  }

  // A quoted string starting at the current '"'; sets t->text to the decoded bytes.
  Status LexString(Token* t) {
    int line = line_, col = col_;
    Advance();  // opening quote
    while (true) {
      if (pos_ >= text_.size() || Peek() == '\n') {
        return Error(line, col, "unterminated string");
      }
      char c = Peek();
      if (c == '"') {
        Advance();
        return Status::Ok();
      }
      if (c != '\\') {
        t->text += c;
        Advance();
        continue;
      }
      int esc_line = line_, esc_col = col_;
      Advance();
      // \" \\ \n \t \r, and \xHH.
      static constexpr std::string_view kEscapeLetters = "\"\\ntr", kEscaped = "\"\\\n\t\r";
      char e = Peek();
      if (size_t k = kEscapeLetters.find(e); k != std::string_view::npos) {
        t->text += kEscaped[k];
      } else if (e == 'x') {
        int hi = HexDigit(Peek(1)), lo = HexDigit(Peek(2));
        if (hi < 0 || lo < 0) {
          return Error(esc_line, esc_col, "\\x must be followed by two hex digits");
        }
        t->text += static_cast<char>(hi * 16 + lo);
        Advance();
        Advance();
      } else {
        if (pos_ >= text_.size() || e == '\n') return Error(line, col, "unterminated string");
        return Error(esc_line, esc_col, fmt::format("unknown escape sequence '\\{}'", e));
      }
      Advance();
    }
  }

  Status LexNumber(Token* t) {
    size_t start = pos_;
    auto digits = [&] {
      size_t n = 0;
      while (IsDigit(Peek())) {
        Advance();
        ++n;
      }
      return n;
    };
    if (Peek() == '-') Advance();
    digits();
    bool is_float = false, ok = true;
    if (Peek() == '.') {
      is_float = true;
      Advance();
      ok = digits() > 0;
    }
    if (ok && (Peek() == 'e' || Peek() == 'E')) {
      is_float = true;
      Advance();
      if (Peek() == '+' || Peek() == '-') Advance();
      ok = digits() > 0;
    }
    if (!ok || IsIdentChar(Peek())) {
      while (IsIdentChar(Peek()) || Peek() == '+' || Peek() == '-') Advance();
      return Error(t->line, t->col,
                   fmt::format("malformed number '{}'", text_.substr(start, pos_ - start)));
    }
    t->kind = is_float ? TokKind::kFloat : TokKind::kInt;
    t->text = std::string(text_.substr(start, pos_ - start));
    return Status::Ok();
  }

  std::string_view text_;
  const std::string& source_;
  size_t pos_ = 0;
  int line_ = 1, col_ = 1;
};

}  // namespace

StatusOr<std::vector<Token>> TokenizeIr(std::string_view text, const std::string& source_name) {
  return Lexer(text, source_name).Run();
}

std::string DescribeToken(const Token& t) {
  switch (t.kind) {
    case TokKind::kEof:
      return "end of input";
    case TokKind::kValueName:
      return fmt::format("'%{}'", t.text);
    case TokKind::kGraphName:
      return fmt::format("'@{}'", t.text);
    case TokKind::kString:
      return fmt::format("string \"{}\"", t.text);
    default:
      return fmt::format("'{}'", t.text);
  }
}

}  // namespace a8
