# SPDX-License-Identifier: Apache-2.0
# cmake -DIN=FILE -DOUT=FILE.c -DNAME=sym -P embed.cmake: FILE's bytes as
# "const unsigned char NAME[]; const size_t NAME_len;" in a C file.
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" n)
math(EXPR len "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" body "${body}")
file(WRITE "${OUT}" "/* generated from ${IN} by cmake/embed.cmake */\n#include <stddef.h>\n"
  "const unsigned char ${NAME}[] = {\n${body}\n};\nconst size_t ${NAME}_len = ${len};\n")
