// Precompiled header for stanlogz model libraries: everything stanc-generated code includes.
#include <stan/model/model_header.hpp>
