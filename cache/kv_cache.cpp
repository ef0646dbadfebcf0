// STUB
namespace staticlm {}
