# ANTLR4: Debian's tool (4.7.2, Java) generates C++ at build time; the parser links Debian's C++
# runtime (4.9). The generated code only uses runtime API that is stable across 4.7-4.9; the
# frontend tests parse every canonical program through it, which is what proves the pairing.
find_program(ANTLR4_TOOL antlr4 REQUIRED)
find_path(ANTLR4_INCLUDE_DIR antlr4-runtime.h PATH_SUFFIXES antlr4-runtime REQUIRED)
find_library(ANTLR4_RUNTIME_LIBRARY NAMES antlr4-runtime REQUIRED)

add_library(nnsc_antlr4_runtime INTERFACE)
target_include_directories(nnsc_antlr4_runtime SYSTEM INTERFACE ${ANTLR4_INCLUDE_DIR})
target_link_libraries(nnsc_antlr4_runtime INTERFACE ${ANTLR4_RUNTIME_LIBRARY})

# nnsc_antlr_generate(<target> GRAMMAR <file.g4> NAMESPACE <ns>)
# Generates the lexer/parser/visitor for a combined grammar into the build tree and adds a static
# library <target> containing them.
function(nnsc_antlr_generate target)
  cmake_parse_arguments(ARG "" "GRAMMAR;NAMESPACE" "" ${ARGN})
  get_filename_component(name ${ARG_GRAMMAR} NAME_WE)
  set(out ${CMAKE_CURRENT_BINARY_DIR}/antlr/${name})
  set(generated
    ${out}/${name}Lexer.cpp ${out}/${name}Parser.cpp
    ${out}/${name}Visitor.cpp ${out}/${name}BaseVisitor.cpp)
  add_custom_command(
    OUTPUT ${generated}
    COMMAND ${ANTLR4_TOOL} -Dlanguage=Cpp -visitor -no-listener
            -package ${ARG_NAMESPACE} -Xexact-output-dir -o ${out} ${ARG_GRAMMAR}
    DEPENDS ${ARG_GRAMMAR}
    COMMENT "ANTLR4: generating C++ for ${name}.g4"
    VERBATIM)
  add_library(${target} STATIC ${generated})
  target_include_directories(${target} PUBLIC ${out})
  target_link_libraries(${target} PUBLIC nnsc_antlr4_runtime)
  # ANTLR 4.7.2 emits u8"..." literals into std::string tables: valid C++17, not C++20
  # (char8_t). Generated code is also not ours to warn about.
  set_target_properties(${target} PROPERTIES CXX_STANDARD 17)
  target_compile_options(${target} PRIVATE -w)
endfunction()
