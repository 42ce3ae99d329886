// A hand-written lexer and recursive-descent parser for the scenario language
// (docs: shared/spec/scenario-language.md).
//
// The lexer runs on demand, one token ahead of the parser, so that errors are reported in
// source order: a bad character late in the file never hides a syntax error before it.
// Every error is a ParseError carrying the position of the token that caused it.
#include "spec/scenario_parser.hpp"

#include <fmt/format.h>

#include <array>
#include <iterator>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace fp8sm::spec {

namespace {

// what() promises a single line; a file name or message carrying a line break would break
// tools that read errors line by line.
std::string single_line(std::string text) {
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return text;
}

std::string format_error(const std::string& file, SourcePos pos, const std::string& message) {
  return fmt::format("{}:{}:{}: error: {}", single_line(file), pos.line, pos.column, single_line(message));
}

}  // namespace

ParseError::ParseError(std::string file, SourcePos pos, std::string message)
    : std::runtime_error(format_error(file, pos, message)),
      file_(std::move(file)),
      pos_(pos),
      message_(std::move(message)) {}

namespace {

constexpr std::array<std::string_view, 19> kKeywords = {
    "autocast", "on",       "off",       "checkpoint", "reentrant", "nonreentrant",
    "no_grad",  "try",      "linear",    "raise",      "always",    "original",
    "recompute", "recompute_uncaptured", "save", "backward", "retain", "step", "data",
};

bool is_keyword(std::string_view word) {
  for (std::string_view keyword : kKeywords) {
    if (keyword == word) return true;
  }
  return false;
}

const char* const kStatementKeywords =
    "autocast, checkpoint, no_grad, try, linear, raise, recompute_uncaptured, save, backward, step, data";

std::string quoted(std::string_view text) { return fmt::format("'{}'", text); }

std::string position_text(SourcePos pos) {
  return fmt::format("{}:{}", pos.line, pos.column);
}

// ---------------------------------------------------------------------------------------------
// Lexer

enum class TokenKind { Word, LeftBrace, RightBrace, Semicolon, EndOfLine, EndOfFile };

struct Token {
  TokenKind kind = TokenKind::EndOfFile;
  std::string_view text;  // the name or keyword; empty for punctuation
  SourcePos pos;
};

bool is_word(const Token& token, std::string_view text) {
  return token.kind == TokenKind::Word && token.text == text;
}

// How a token reads in "found ..." parts of messages.
std::string describe(const Token& token) {
  switch (token.kind) {
    case TokenKind::Word:
      return is_keyword(token.text) ? fmt::format("keyword {}", quoted(token.text)) : quoted(token.text);
    case TokenKind::LeftBrace:
      return "'{'";
    case TokenKind::RightBrace:
      return "'}'";
    case TokenKind::Semicolon:
      return "';'";
    case TokenKind::EndOfLine:
      return "end of line";
    case TokenKind::EndOfFile:
      return "end of file";
  }
  return "?";
}

bool starts_name(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

bool continues_name(char c) { return starts_name(c) || (c >= '0' && c <= '9'); }

// Control bytes and non-ASCII bytes are shown as hex so the message stays printable.
std::string describe_character(char c) {
  const auto byte = static_cast<unsigned char>(c);
  if (byte > 0x20 && byte < 0x7F) return fmt::format("character {}", quoted(std::string_view(&c, 1)));
  return fmt::format("byte 0x{:02X}", byte);
}

class Lexer {
 public:
  Lexer(std::string_view text, const std::string& file) : text_(text), file_(file) {}

  const Token& peek() {
    if (!lookahead_) lookahead_ = scan();
    return *lookahead_;
  }

  Token next() {
    Token token = peek();
    lookahead_.reset();
    return token;
  }

 private:
  bool at_end() const { return offset_ >= text_.size(); }
  char current() const { return text_[offset_]; }
  SourcePos here() const { return {line_, column_}; }

  // Columns count bytes, so a tab or a UTF-8 sequence advances by its byte count.
  void advance() {
    if (current() == '\n') {
      ++line_;
      column_ = 1;
    } else {
      ++column_;
    }
    ++offset_;
  }

  // '\r' counts as a blank so files with Windows line endings parse the same.
  void skip_blanks() {
    while (!at_end() && (current() == ' ' || current() == '\t' || current() == '\r')) advance();
  }

  Token scan();
  Token scan_comment();
  Token scan_word();
  Token punctuation(TokenKind kind);

  std::string_view text_;
  const std::string& file_;
  std::size_t offset_ = 0;
  int line_ = 1;
  int column_ = 1;
  std::optional<Token> lookahead_;
};

Token Lexer::scan() {
  skip_blanks();
  if (at_end()) return {TokenKind::EndOfFile, {}, here()};
  const char c = current();
  if (c == '#') return scan_comment();
  if (c == '\n') return punctuation(TokenKind::EndOfLine);
  if (c == '{') return punctuation(TokenKind::LeftBrace);
  if (c == '}') return punctuation(TokenKind::RightBrace);
  if (c == ';') return punctuation(TokenKind::Semicolon);
  if (starts_name(c)) return scan_word();
  throw ParseError(file_, here(),
                   fmt::format("unexpected {}; expected a name, '{{', '}}', ';', '#' or end of line",
                               describe_character(c)));
}

// A comment ends its line: it is reported as the end of line, placed where the comment starts,
// since that is where a missing argument would have had to be written.
Token Lexer::scan_comment() {
  const SourcePos start = here();
  while (!at_end() && current() != '\n') advance();
  if (at_end()) return {TokenKind::EndOfFile, {}, here()};
  advance();
  return {TokenKind::EndOfLine, {}, start};
}

Token Lexer::scan_word() {
  const SourcePos start = here();
  const std::size_t begin = offset_;
  while (!at_end() && continues_name(current())) advance();
  return {TokenKind::Word, text_.substr(begin, offset_ - begin), start};
}

Token Lexer::punctuation(TokenKind kind) {
  const SourcePos start = here();
  advance();
  return {kind, {}, start};
}

// ---------------------------------------------------------------------------------------------
// Parser

struct OpenBlock {
  std::string_view keyword;  // "autocast", "checkpoint", ...: names the block in messages
  SourcePos pos;
  bool checkpoint = false;
};

// Names map to indices in order of first appearance; std::less<> lets a string_view look up.
using NameIndex = std::map<std::string, std::uint16_t, std::less<>>;

class Parser {
 public:
  Parser(std::string_view text, const std::string& file) : lexer_(text, file), file_(file) {}

  Program parse();

 private:
  [[noreturn]] void fail(SourcePos pos, const std::string& message) const {
    throw ParseError(file_, pos, message);
  }

  void parse_statement(const Token& keyword);
  void parse_block(const Token& keyword);
  Op parse_block_argument(const Token& keyword, std::string& header);
  void expect_open_brace(const std::string& header);
  void close_block(const Token& brace);
  void finish(const Token& end_of_file) const;

  std::string parse_simple_statement(const Token& keyword);
  std::string parse_linear(const Token& keyword);
  std::string parse_raise(const Token& keyword);
  std::string parse_save(const Token& keyword);
  std::string parse_backward(const Token& keyword);
  std::string parse_step(const Token& keyword);

  Token expect_name(const char* what, std::string_view after);
  void expect_statement_end(const std::string& statement);
  void reject_inside_checkpoint(const Token& keyword, const char* why) const;
  bool inside_checkpoint() const;

  std::uint16_t intern(NameIndex& index, std::vector<std::string>& names, const Token& name,
                       const char* kind) const;
  void emit(Op op, SourcePos pos, std::uint16_t name = 0, bool retain = false);

  Lexer lexer_;
  const std::string& file_;
  Program program_;
  std::vector<OpenBlock> open_blocks_;
  int open_checkpoints_ = 0;  // among open_blocks_
  NameIndex module_index_;
  NameIndex tape_index_;
};

Program Parser::parse() {
  for (;;) {
    const Token token = lexer_.next();
    switch (token.kind) {
      case TokenKind::EndOfLine:
      case TokenKind::Semicolon:
        break;  // an empty statement
      case TokenKind::EndOfFile:
        finish(token);
        return std::move(program_);
      case TokenKind::RightBrace:
        close_block(token);
        expect_statement_end("}");
        break;
      case TokenKind::LeftBrace:
        fail(token.pos, "unexpected '{'; a block opens only after autocast, checkpoint, "
                        "no_grad or try");
      case TokenKind::Word:
        parse_statement(token);
        break;
    }
  }
}

void Parser::parse_statement(const Token& keyword) {
  const std::string_view word = keyword.text;
  if (word == "autocast" || word == "checkpoint" || word == "no_grad" || word == "try") {
    parse_block(keyword);  // ends at its '{': the body follows without a separator
    return;
  }
  expect_statement_end(parse_simple_statement(keyword));
}

void Parser::parse_block(const Token& keyword) {
  std::string header(keyword.text);
  const Op op = parse_block_argument(keyword, header);
  expect_open_brace(header);
  if (open_blocks_.size() >= static_cast<std::size_t>(kMaxBlockNesting)) {
    fail(keyword.pos, fmt::format("blocks nest deeper than {} here (the limit of the language)", kMaxBlockNesting));
  }
  if (is_checkpoint(op) && open_checkpoints_ >= kMaxCheckpointNesting) {
    fail(keyword.pos,
         fmt::format("checkpoints nest deeper than {} here (the limit of the language)", kMaxCheckpointNesting));
  }
  emit(op, keyword.pos);
  open_blocks_.push_back({keyword.text, keyword.pos, is_checkpoint(op)});
  open_checkpoints_ += is_checkpoint(op) ? 1 : 0;
}

// Reads the word after 'autocast' / 'checkpoint' (the others take none) and extends `header`
// with it, so later messages can quote the header as written.
Op Parser::parse_block_argument(const Token& keyword, std::string& header) {
  if (keyword.text == "no_grad") return Op::NoGrad;
  if (keyword.text == "try") return Op::Try;

  const Token argument = lexer_.next();
  if (keyword.text == "autocast") {
    if (is_word(argument, "on") || is_word(argument, "off")) {
      fmt::format_to(std::back_inserter(header), " {}", argument.text);
      return argument.text == "on" ? Op::AutocastOn : Op::AutocastOff;
    }
    fail(argument.pos, fmt::format("expected 'on' or 'off' after 'autocast', found {}", describe(argument)));
  }
  if (is_word(argument, "reentrant") || is_word(argument, "nonreentrant")) {
    fmt::format_to(std::back_inserter(header), " {}", argument.text);
    return argument.text == "reentrant" ? Op::CheckpointReentrant : Op::CheckpointNonReentrant;
  }
  fail(argument.pos,
       fmt::format("expected 'reentrant' or 'nonreentrant' after 'checkpoint', found {}", describe(argument)));
}

// The '{' may sit on a later line than its header (Allman style), but nothing else may come
// between them.
void Parser::expect_open_brace(const std::string& header) {
  while (lexer_.peek().kind == TokenKind::EndOfLine) lexer_.next();
  const Token brace = lexer_.next();
  if (brace.kind != TokenKind::LeftBrace) {
    fail(brace.pos, fmt::format("expected '{{' after {}, found {}", quoted(header), describe(brace)));
  }
}

void Parser::close_block(const Token& brace) {
  if (open_blocks_.empty()) fail(brace.pos, "unexpected '}': no block is open");
  open_checkpoints_ -= open_blocks_.back().checkpoint ? 1 : 0;
  open_blocks_.pop_back();
  emit(Op::Close, brace.pos);
}

// The innermost open block is the one whose '}' is missing first.
void Parser::finish(const Token& end_of_file) const {
  if (open_blocks_.empty()) return;
  const OpenBlock& block = open_blocks_.back();
  fail(end_of_file.pos, fmt::format("unclosed block: {} opened at {} has no matching '}}'", quoted(block.keyword),
                                    position_text(block.pos)));
}

// Returns the statement as written, for the message when something follows it on its line.
std::string Parser::parse_simple_statement(const Token& keyword) {
  const std::string_view word = keyword.text;
  if (word == "linear") return parse_linear(keyword);
  if (word == "raise") return parse_raise(keyword);
  if (word == "recompute_uncaptured") {
    emit(Op::RecomputeUncaptured, keyword.pos);
    return "recompute_uncaptured";
  }
  if (word == "save") return parse_save(keyword);
  if (word == "backward") return parse_backward(keyword);
  if (word == "step") return parse_step(keyword);
  if (word == "data") {
    // It drops the graph recorded so far: inside a checkpoint, a recompute would drop it again.
    reject_inside_checkpoint(keyword, " (its recompute would drop the graph again)");
    emit(Op::Data, keyword.pos);
    return "data";
  }
  fail(keyword.pos, fmt::format("unknown statement {}; expected one of {}", quoted(word), kStatementKeywords));
}

std::string Parser::parse_linear(const Token& keyword) {
  const Token name = expect_name("a module name", "linear");
  emit(Op::Linear, keyword.pos,
       intern(module_index_, program_.module_names, name, "module"));
  return fmt::format("linear {}", name.text);
}

std::string Parser::parse_raise(const Token& keyword) {
  const Token argument = lexer_.next();
  Op op = Op::RaiseAlways;
  if (is_word(argument, "always")) {
    op = Op::RaiseAlways;
  } else if (is_word(argument, "original")) {
    op = Op::RaiseOriginal;
  } else if (is_word(argument, "recompute")) {
    op = Op::RaiseRecompute;
  } else {
    fail(argument.pos,
         fmt::format("expected 'always', 'original' or 'recompute' after 'raise', found {}", describe(argument)));
  }
  emit(op, keyword.pos);
  return fmt::format("raise {}", argument.text);
}

std::string Parser::parse_save(const Token& keyword) {
  reject_inside_checkpoint(keyword, "");
  const Token name = expect_name("a tape name", "save");
  emit(Op::Save, keyword.pos, intern(tape_index_, program_.tape_names, name, "tape"));
  return fmt::format("save {}", name.text);
}

// backward [TAPE] [retain]: both parts are optional, in that order.
std::string Parser::parse_backward(const Token& keyword) {
  reject_inside_checkpoint(keyword, " (its recompute would run the backward again)");
  std::string statement = "backward";
  std::uint16_t tape = kCurrentGraph;

  const Token& maybe_tape = lexer_.peek();
  if (maybe_tape.kind == TokenKind::Word && !is_keyword(maybe_tape.text)) {
    const Token name = lexer_.next();
    const auto found = tape_index_.find(name.text);
    if (found == tape_index_.end()) {
      fail(name.pos, fmt::format("backward of unknown tape {}: no 'save {}' before this line", quoted(name.text),
                                 name.text));
    }
    tape = found->second;
    fmt::format_to(std::back_inserter(statement), " {}", name.text);
  }

  const bool retain = is_word(lexer_.peek(), "retain");
  if (retain) {
    lexer_.next();
    statement += " retain";
  }
  emit(Op::Backward, keyword.pos, tape, retain);
  return statement;
}

std::string Parser::parse_step(const Token& keyword) {
  if (!open_blocks_.empty()) {
    fail(keyword.pos,
         "'step' is not allowed inside a block: every block must be closed at the end of a step");
  }
  emit(Op::Step, keyword.pos);
  return "step";
}

Token Parser::expect_name(const char* what, std::string_view after) {
  const Token name = lexer_.next();
  if (name.kind == TokenKind::Word && !is_keyword(name.text)) return name;
  fail(name.pos, fmt::format("expected {} after {}, found {}{}", what, quoted(after), describe(name),
                             name.kind == TokenKind::Word ? " (keywords cannot be used as names)" : ""));
}

// A statement ends at a ';' or a line break, or just before a '}' (`{ linear L0 }`) or the end
// of the file; the '}' and end of file are left for the main loop.
void Parser::expect_statement_end(const std::string& statement) {
  const Token& token = lexer_.peek();
  switch (token.kind) {
    case TokenKind::EndOfLine:
    case TokenKind::Semicolon:
      lexer_.next();
      return;
    case TokenKind::RightBrace:
    case TokenKind::EndOfFile:
      return;
    case TokenKind::Word:
    case TokenKind::LeftBrace:
      break;
  }
  fail(token.pos, fmt::format("expected ';' or end of line after {}, found {}", quoted(statement), describe(token)));
}

bool Parser::inside_checkpoint() const { return open_checkpoints_ > 0; }

// A checkpoint replays its body on recompute, so a statement that ends or consumes a graph
// inside it would run a second time; the language rules it out statically.
void Parser::reject_inside_checkpoint(const Token& keyword, const char* why) const {
  if (!inside_checkpoint()) return;
  fail(keyword.pos,
       fmt::format("{} is not allowed inside a checkpoint block{}", quoted(keyword.text), why));
}

// Indices must fit Statement::name, and a tape index must stay clear of kCurrentGraph.
std::uint16_t Parser::intern(NameIndex& index, std::vector<std::string>& names, const Token& name,
                             const char* kind) const {
  const auto found = index.find(name.text);
  if (found != index.end()) return found->second;
  if (names.size() >= kCurrentGraph) {
    fail(name.pos, fmt::format("too many distinct {} names (at most {})", kind, kCurrentGraph));
  }
  const auto fresh = static_cast<std::uint16_t>(names.size());
  names.emplace_back(name.text);
  index.emplace(std::string(name.text), fresh);
  return fresh;
}

void Parser::emit(Op op, SourcePos pos, std::uint16_t name, bool retain) {
  Statement statement;
  statement.op = op;
  statement.name = name;
  statement.retain = retain;
  statement.pos = pos;
  program_.statements.push_back(statement);
}

}  // namespace

Program parse_scenario(std::string_view text, const std::string& file) {
  return Parser(text, file).parse();
}

}  // namespace fp8sm::spec
